import { group } from './define';

export const memorySettings = group('Memory', {
});
