import { group } from './define';

export const vectorsSettings = group('Embeddings and vector search', {
});
