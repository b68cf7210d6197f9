"""hakbench: the driver of hakmem's benchmark suite (see bench/README.md)."""
