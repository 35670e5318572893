package sbinit

import "errors"

var (
	// ErrInitGone: the control channel to the init broke; the sandbox is dead.
	ErrInitGone = errors.New("sandbox init gone")
	// ErrProtocol: a peer sent something the protocol does not allow.
	ErrProtocol = errors.New("sandbox init protocol error")
	// ErrSetup: the init could not build the sandbox; the message says why.
	ErrSetup = errors.New("set up sandbox")
	// ErrTooLarge: a transfer of files went over its byte cap.
	ErrTooLarge = errors.New("files too large to carry")
)
