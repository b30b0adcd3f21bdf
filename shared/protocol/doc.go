// Package protocol is SCV's client protocol: the Go types of every client
// message and server event of protocol versions 1, 2 and 3, the stable error
// and turn-failure codes, and the NDJSON codec that frames them.
//
// The wire format is one UTF-8 JSON object per line. Every object has a
// "type" discriminator; the Go structs leave it out and report it through
// their Kind method instead, so a value can never disagree with its own type.
// EncodeEvent and EncodeClientMessage write the discriminator first, and
// DecodeClientMessage and DecodeEvent dispatch on it.
//
// Framing is kept apart from the messages: FrameReader splits a stream into
// lines of at most a given size without ever buffering more. The encoders
// do not enforce a frame limit, since a session's server-frame limit is
// configurable; the writer compares the encoded length with it (and may
// report the excess with ErrFrameTooLarge). docs/protocol.md is the prose
// description of the same contract.
package protocol
