import { group } from './define';

export const blobsSettings = group('Blobs and parsing', {
});
