// Replaced by the agent implementation.
export {};
