/**
 * `viewsync/store`: the storage seam, for those who write a store of their own (its conformance
 * suite is in `viewsync/testing`). The root exports `Storage` alone, the type of `storage`.
 */
export type {
  RangeRead,
  RangeRow,
  Storage,
  StorageTransaction,
  StoreParts,
  TransactionOptions,
  WriteLane,
  ScanOptions as StorageScanOptions,
  StoredValue,
} from './storage/types.js';
export { compareUTF8 } from './base/utf8.js';
