import { group } from './define';

export const webSettings = group('Search, browse and feedback', {
});
