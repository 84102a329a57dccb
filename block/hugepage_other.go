//go:build unix && !linux

package block

// adviseHuge does nothing: there is no transparent huge page advice here.
func adviseHuge([]byte) {}
