package hostsetup

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// SubIDBounds are where useradd takes subordinate ids from
// (SUB_UID_MIN/SUB_UID_MAX or SUB_GID_MIN/SUB_GID_MAX in login.defs).
type SubIDBounds struct {
	Min, Max uint64
}

// defaultSubIDBounds are shadow's defaults when login.defs says nothing.
var defaultSubIDBounds = SubIDBounds{Min: 100000, Max: 600100000}

// parseLoginDefs reads the SUB_UID_* (kind "UID") or SUB_GID_* (kind
// "GID") bounds from the contents of /etc/login.defs, keeping the defaults
// for keys it lacks or cannot read.
func parseLoginDefs(data []byte, kind string) SubIDBounds {
	b := defaultSubIDBounds
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 32)
		if err != nil {
			continue
		}
		switch f[0] {
		case "SUB_" + kind + "_MIN":
			b.Min = v
		case "SUB_" + kind + "_MAX":
			b.Max = v
		}
	}
	return b
}
