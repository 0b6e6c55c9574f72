import { tsImport } from 'tsx/esm/api';

export default async function globalTeardown(globalConfig, projectConfig) {
  const { default: teardown } = await tsImport('./servers-teardown.ts', import.meta.url);
  return teardown(globalConfig, projectConfig);
}
