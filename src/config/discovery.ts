import { group } from './define';

export const discoverySettings = group('Discovery and MCP', {
});
