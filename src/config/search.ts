import { group } from './define';

export const searchSettings = group('Web search providers', {
});
