//! rpcmux
