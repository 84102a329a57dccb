// Package stattime reads a file's times with 64-bit seconds where the
// system's stat structure holds only 32 (32-bit Linux: times past 2038
// wrap there). Elsewhere Stat_t is enough and Times reports ok false.
package stattime

// Time is seconds and nanoseconds since the epoch.
type Time struct{ Sec, Nsec int64 }
