// Package remote registers every remote backend of this module with
// package source: http:// and https:// (package httpsource), s3://
// (package s3source) and docker:// registry references (package
// registrysource). A program that reads images wherever they are
// imports it for its side effect:
//
//	import _ "github.com/godwarfs/godwarfs/source/remote"
//
// Each backend links its client (net/http; the AWS SDK;
// go-containerregistry and the docker credential helpers); a program
// that needs one kind imports that package alone.
package remote

import (
	_ "github.com/godwarfs/godwarfs/source/httpsource"     // http://, https://
	_ "github.com/godwarfs/godwarfs/source/registrysource" // docker://
	_ "github.com/godwarfs/godwarfs/source/s3source"       // s3://
)
