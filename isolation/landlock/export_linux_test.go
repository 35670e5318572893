package landlock

// ABIRefusal exposes abiRefusal to the tests: nil or the refusal's error.
func ABIRefusal(abi int, sharedUID bool, accept []string) error {
	if r := abiRefusal(abi, sharedUID, accept); r != nil {
		return r.err()
	}
	return nil
}
