/**
 * The CRI v1 shapes the other type files share (types.ts re-exports them): labels, metadata, wrapped integers, image
 * references.
 */

export type Labels = Record<string, string>;
export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt?: number;
}
export interface ContainerMetadata {
  name: string;
  attempt?: number;
}
export interface UInt64Value {
  value: number;
}
export interface Int64Value {
  value: number;
}
export interface ImageSpec {
  image: string;
  annotations?: Labels;
  user_specified_image?: string;
  runtime_handler?: string;
}
