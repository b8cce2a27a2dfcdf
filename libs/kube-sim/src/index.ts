// kube-sim: grows with its issue; see README.md.
export {};
