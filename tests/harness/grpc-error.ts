/** A gRPC service error as @grpc/grpc-js throws it (code, details, metadata), for fake WorkflowServices in unit tests. */
import { Metadata } from '@grpc/grpc-js';

export const grpcError = (code: number, details: string) =>
  Object.assign(new Error(`${code}: ${details}`), { code, details, metadata: new Metadata() });
