//go:build !linux

package openai

import (
	"context"
	"net"
)

// quickAckDial returns dial unchanged: TCP_QUICKACK is Linux's.
func quickAckDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return dial
}
