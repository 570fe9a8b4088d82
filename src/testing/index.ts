export { storageConformance, type ConformanceCheck, type ConformanceOptions } from './conformance.js';
export { AssertionError } from './expect.js';
