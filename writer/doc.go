// Package writer builds DwarFS images and rewrites existing ones.
package writer
