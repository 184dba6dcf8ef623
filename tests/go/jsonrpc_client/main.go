// Go's net/rpc/jsonrpc client (JSON-RPC 1.0 over raw TCP) against rpcmux's demo verbs,
// as a Go program would use it. Usage: jsonrpc_client HOST:PORT. Prints one "ok NAME"
// line per check and exits 1 at the first failure.
//
// What it proves: errors come back as Go's client reads them (a string; any other shape
// makes it shut the connection down for every later call), `[null]` (Go's nil
// argument) calls a verb of no parameters, and calls and errors pipelined on one
// connection, 200 of them at once, each get their own reply.
package main

import (
	"fmt"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"
	"sync"
)

func fail(format string, args ...interface{}) {
	fmt.Printf("FAIL "+format+"\n", args...)
	os.Exit(1)
}

func ok(name string) { fmt.Println("ok", name) }

const missing = "Method not found: no.such (code -32601)"

func main() {
	c, err := jsonrpc.Dial("tcp", os.Args[1])
	if err != nil {
		fail("dial: %v", err)
	}
	defer c.Close()

	var s string
	if err := c.Call("echo", "hello", &s); err != nil || s != "hello" {
		fail("echo: %q %v", s, err)
	}
	ok("echo")

	var b bool
	if err := c.Call("ping", nil, &b); err != nil || !b {
		fail("ping with a nil argument ([null]): %v %v", b, err)
	}
	ok("nil argument")

	err = c.Call("no.such", nil, &s)
	if se, is := err.(rpc.ServerError); !is || string(se) != missing {
		fail("unknown verb: got %T %v", err, err)
	}
	ok("error is a string")

	// The connection outlived the error.
	if err := c.Call("echo", "after", &s); err != nil || s != "after" {
		fail("echo after an error: %q %v", s, err)
	}
	ok("call after an error")

	// Pipelined: all sent before any reply is read; the slow one first.
	var slept int
	var a, z string
	var none bool
	calls := []*rpc.Call{
		c.Go("sleep", 200, &slept, nil),
		c.Go("echo", "a", &a, nil),
		c.Go("no.such", nil, &none, nil),
		c.Go("echo", "z", &z, nil),
	}
	for _, call := range calls {
		<-call.Done
	}
	if calls[0].Error != nil || slept != 200 {
		fail("pipelined sleep: %v %v", slept, calls[0].Error)
	}
	if calls[1].Error != nil || a != "a" || calls[3].Error != nil || z != "z" {
		fail("pipelined echos: %q %v %q %v", a, calls[1].Error, z, calls[3].Error)
	}
	if se, is := calls[2].Error.(rpc.ServerError); !is || string(se) != missing {
		fail("pipelined error: %T %v", calls[2].Error, calls[2].Error)
	}
	ok("pipelined calls and errors")

	// 200 at once on this one connection, every tenth an error.
	var wg sync.WaitGroup
	bad := make(chan string, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var n int
			if i%10 == 0 {
				err := c.Call("no.such", i, &n)
				if se, is := err.(rpc.ServerError); !is || string(se) != missing {
					bad <- fmt.Sprintf("call %d: %T %v", i, err, err)
				}
				return
			}
			if err := c.Call("echo", i, &n); err != nil || n != i {
				bad <- fmt.Sprintf("call %d: %d %v", i, n, err)
			}
		}(i)
	}
	wg.Wait()
	close(bad)
	for msg := range bad {
		fail("concurrent %s", msg)
	}
	ok("200 concurrent calls")
}
