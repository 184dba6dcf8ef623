// Go programs the tests build and run (tests/common/mod.rs `go_build`): Go's own
// net/rpc/jsonrpc client and server, the standard library only, built offline.
module rpcmux.test/go

go 1.19
