// Replaced by the hub implementation.
export {};
