/** The CRI v1 ImageService's image and registry credentials (types.ts re-exports them). */
import type { ImageSpec, Int64Value } from './types-common.js';

export interface Image {
  id: string;
  repo_tags: string[];
  repo_digests: string[];
  size: number;
  uid?: Int64Value | null;
  username?: string;
  spec?: ImageSpec | null;
  pinned?: boolean;
}
export interface AuthConfig {
  username?: string;
  password?: string;
  auth?: string;
  server_address?: string;
  identity_token?: string;
  registry_token?: string;
}
