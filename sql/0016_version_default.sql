-- A deployment's version may be absent (issue 25). 0012 made it NOT NULL, with ctrl giving each
-- new deployment its environment's next `v<N>`; every other writer that names none (an older
-- ctrl replica during a rolling upgrade, an operator's SQL, a tool) then failed its insert
-- outright. Such a row now has no version: it is listed and rolled back to by its id. The unique
-- index still holds every named version, and NULLs never collide in it.
--
-- A trigger numbering those rows was tried and refused: it serialises every writer of an
-- environment on the counter row for the length of its transaction, and a bulk insert updating
-- one counter row per inserted row is quadratic in one transaction.
ALTER TABLE deployments ALTER COLUMN version DROP NOT NULL;
