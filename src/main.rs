//! The `rpcmux` command line.

mod cli;

// With feature `count-allocs` the library sets a counting wrapper of mimalloc instead
// (src/observe/alloc_count.rs).
#[cfg(not(feature = "count-allocs"))]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
