//go:build !windows && !(linux && (386 || arm))

package dwarfs

import (
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/mountopts"
)

// DriverOptions takes the driver settings from a parsed dwarfs -o list.
func DriverOptions(o mountopts.Options) fusefs.MountOptions {
	m := fusefs.MountOptions{
		BlockSize: o.BlockSize, Readahead: o.Readahead, SeqDetector: o.SeqDetector,
		NoCacheFiles: !o.CacheFiles, EnableNlink: o.EnableNlink, UID: o.UID, GID: o.GID,
		TidyInterval: o.TidyInterval, TidyMaxAge: o.TidyMaxAge, Perfmon: o.Perfmon,
		AllowOther: o.AllowOther, AllowRoot: o.AllowRoot, DefaultPermissions: o.DefaultPermissions,
		FsName: o.FsName, Subtype: o.Subtype, KernelFlags: o.KernelFlags,
		ReadOnly: o.ReadOnly, CaseInsensitive: o.CaseInsensitive, CacheSparse: o.CacheSparse,
		MaxThreads: o.MaxThreads, AutoUnmount: o.AutoUnmount, NoXattr: o.NoXattr,
	}
	if o.SeqDetector == 0 {
		m.SeqDetector = -1 // seq_detector=0 turns prefetching off
	}
	switch o.TidyStrategy {
	case mountopts.TidyTime:
		m.Tidy = fusefs.TidyTime
	case mountopts.TidySwap:
		m.Tidy = fusefs.TidySwap
	}
	return m
}
