// windows: grows with its issue; see README.md.
export {};
