import { tsImport } from 'tsx/esm/api';

export default async function globalTeardown() {
  const { teardown } = await tsImport('./servers.ts', import.meta.url);
  return teardown();
}
