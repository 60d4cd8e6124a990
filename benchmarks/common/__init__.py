"""What the benchmarks share: printed tables, byte-compiling, bench_gate's synthetic retriever."""
