// Shapes shared by the simulator's modules. Objects are plain JSON values; the store never
// hands out its own copies for mutation (readers get the stored value, writers build a new one).

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  managedFields?: ManagedFieldsEntry[];
  finalizers?: string[];
  [key: string]: unknown;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  fieldsType: 'FieldsV1';
  fieldsV1: JsonObject;
  subresource?: string;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: any;
  status?: any;
  [key: string]: any;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoredEvent {
  type: WatchEventType;
  rv: number;
  object: KubeObject;
  /** The object before a MODIFIED, so selector watches can turn leaving into DELETED. */
  previous?: KubeObject;
}
