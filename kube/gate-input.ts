/** A gate's JSON input, read from the ConfigMap or Secret key the spec names. */
import type * as k8s from '@kubernetes/client-node';
import { PermanentError } from '../api/errors.js';
import { ignoreNotFound } from './client.js';

/** Where a gate's JSON input is: one key of a ConfigMap or Secret in the resource's namespace. */
export interface GateInputSource {
  configMapKeyRef?: { name: string; key: string };
  secretKeyRef?: { name: string; key: string };
}

/** Reads a gate's JSON input; a missing object or key, or text that is not JSON, is a PermanentError. */
export type GateInputReader = (namespace: string, source: GateInputSource) => Promise<unknown>;

/** The gate input reader over a CoreV1Api (shared by the Kubernetes and the Temporal activities). */
export function gateInputReader(core: k8s.CoreV1Api): GateInputReader {
  // The user named the object: its absence is a mistake in the spec, not a moment to wait out.
  const mustExist = async <T>(kind: string, namespace: string, name: string, read: Promise<T>) => {
    const found = await ignoreNotFound(read);
    if (found === undefined) throw new PermanentError(`${kind} ${namespace}/${name} not found`);
    return found;
  };
  return async (namespace, source) => {
    let text: string | undefined;
    let where = '';
    if (source.configMapKeyRef) {
      const { name, key } = source.configMapKeyRef;
      where = `ConfigMap ${namespace}/${name} key "${key}"`;
      text = (await mustExist('ConfigMap', namespace, name, core.readNamespacedConfigMap({ name, namespace }))).data?.[
        key
      ];
      if (text === undefined) throw new PermanentError(`ConfigMap ${namespace}/${name} has no key "${key}"`);
    } else if (source.secretKeyRef) {
      const { name, key } = source.secretKeyRef;
      where = `Secret ${namespace}/${name} key "${key}"`;
      const data = (await mustExist('Secret', namespace, name, core.readNamespacedSecret({ name, namespace }))).data?.[
        key
      ];
      if (data === undefined) throw new PermanentError(`Secret ${namespace}/${name} has no key "${key}"`);
      text = Buffer.from(data, 'base64').toString('utf8');
    }
    try {
      return JSON.parse(text ?? 'null');
    } catch {
      // Never the text itself: it may be a Secret's.
      throw new PermanentError(`gate input in ${where} is not JSON`);
    }
  };
}
