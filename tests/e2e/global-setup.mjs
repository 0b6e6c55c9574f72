// Jest loads global setup outside its module mapper; tsx lets it import our TypeScript as is.
import { tsImport } from 'tsx/esm/api';

export default async function globalSetup(globalConfig, projectConfig) {
  const { setup } = await tsImport('./servers.ts', import.meta.url);
  return setup(globalConfig, projectConfig);
}
