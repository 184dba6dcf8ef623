// A Go net/rpc/jsonrpc service (JSON-RPC 1.0 over raw TCP, `jsonrpc.ServeConn`), for the
// gateway to put in front of. Usage: jsonrpc_server; prints "listening on PORT" once it
// accepts on 127.0.0.1. No introspection (Go has none): it answers system.listMethods
// with the string error "rpc: can't find service system.listMethods".
package main

import (
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"
)

type Args struct{ A, B int }

type Quotient struct{ Quo, Rem int }

type Arith int

func (*Arith) Multiply(args *Args, reply *int) error {
	*reply = args.A * args.B
	return nil
}

func (*Arith) Divide(args *Args, q *Quotient) error {
	if args.B == 0 {
		return errors.New("divide by zero")
	}
	q.Quo, q.Rem = args.A/args.B, args.A%args.B
	return nil
}

func main() {
	if err := rpc.Register(new(Arith)); err != nil {
		panic(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Printf("listening on %d\n", l.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		go jsonrpc.ServeConn(conn)
	}
}
