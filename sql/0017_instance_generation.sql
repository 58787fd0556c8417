-- The desired-state generation of its deployment (sql/0009) that krane had applied when it
-- observed the pod. After a stop and a start a pod's report arriving after the start may still
-- describe the pod before krane applied it (a relist made earlier, a report buffered across a
-- krane restart), and the old pods share the new ones' names; only a report made under the
-- start's generation says the start's pods are running. Null: a krane from before the stamp.
ALTER TABLE instances ADD COLUMN generation int CHECK (generation IS NULL OR generation >= 0);
