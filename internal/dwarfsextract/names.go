package dwarfsextract

import (
	"fmt"
	"strings"
)

// windowsReserved are the device names Windows resolves in every
// directory, with or without an extension (NUL.txt is NUL too).
var windowsReserved = map[string]bool{
	"CON": true, "PRN": true, "AUX": true, "NUL": true, "CONIN$": true, "CONOUT$": true,
	"COM1": true, "COM2": true, "COM3": true, "COM4": true, "COM5": true, "COM6": true, "COM7": true, "COM8": true, "COM9": true,
	"COM¹": true, "COM²": true, "COM³": true,
	"LPT1": true, "LPT2": true, "LPT3": true, "LPT4": true, "LPT5": true, "LPT6": true, "LPT7": true, "LPT8": true, "LPT9": true,
	"LPT¹": true, "LPT²": true, "LPT³": true,
}

// windowsNameProblem says why Windows cannot hold a file named name, or
// returns nil. The rule (written in the manual): control characters,
// any of \ / : * ? " < > |, a final dot or space, and the reserved device
// names (CON, PRN, AUX, NUL, COM1-9, LPT1-9, alone or before a dot, any
// case). Such entries are not renamed: dwarfsextract reports them and
// leaves them out, with what is below them.
func windowsNameProblem(name string) error {
	for _, r := range name {
		if r < 0x20 {
			return fmt.Errorf("name %q holds control character %#x, which Windows does not allow", name, r)
		}
		if strings.ContainsRune(`\/:*?"<>|`, r) {
			return fmt.Errorf("name %q holds %q, which Windows does not allow", name, r)
		}
	}
	if strings.HasSuffix(name, ".") || strings.HasSuffix(name, " ") {
		return fmt.Errorf("name %q ends in a dot or space, which Windows drops", name)
	}
	stem, _, _ := strings.Cut(name, ".")
	if windowsReserved[strings.ToUpper(strings.TrimRight(stem, " "))] {
		return fmt.Errorf("name %q is a device name reserved by Windows", name)
	}
	return nil
}
