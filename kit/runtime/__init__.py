"""Code that runs inside the kernel: hardware, precision, paths, checkpoints, the session."""
