package cli

// RegistryManual describes images stored in container registries, for
// the manual pages of every tool that reads or pushes them.
var RegistryManual = []string{
	"An image in a container registry is named docker://REGISTRY/REPO:TAG or " +
		"docker://REGISTRY/REPO@sha256:DIGEST and is read in place, like an image at an https:// URL: " +
		"the reference is resolved to its manifest once, when the image is opened, and every read is a " +
		"ranged request for the image blob that manifest names by its digest (following the registry's " +
		"redirects to its storage), so a tag moved to another image later changes nothing that is read; " +
		"open it again to see the new one. The remote_* and disk_cache options of dwarfs apply, and the " +
		"disk cache is shared by every tag of the same blob.",
	"Credentials are those docker and podman use: ~/.docker/config.json ($DOCKER_CONFIG) or, without " +
		"it, $REGISTRY_AUTH_FILE or podman's auth.json; without any, the registry is asked anonymously. " +
		"Basic auth and bearer tokens are used as the registry's WWW-Authenticate asks, and a token the " +
		"registry refuses mid-mount is renewed. A registry on localhost, a loopback or a private address " +
		"is spoken to over plain HTTP. A registry, or a proxy in front of it, that answers a range " +
		"request with the whole blob or with an HTML page is reported as such: the image cannot be read " +
		"from it in place.",
	"An image is stored as an OCI 1.1 artifact: a manifest with artifactType " +
		"application/vnd.godwarfs.image.v1+dwarfs, the empty config (application/vnd.oci.empty.v1+json) " +
		"and one layer of that media type whose blob is the image file byte for byte. mkdwarfs -o " +
		"docker://... and dwarfsck --push push it; so does oras push REGISTRY/REPO:TAG --artifact-type " +
		"application/vnd.godwarfs.image.v1+dwarfs IMAGE:application/vnd.godwarfs.image.v1+dwarfs. Any " +
		"manifest with one layer of that media type is read; a container image is refused with a " +
		"message saying so (convert it with mkdwarfs -i docker://...).",
	"A signature (see dwarfsck --sign) is an artifact of its own in the same repository, of type " +
		"application/vnd.godwarfs.signature.v1, tagged TAG.sig, and sha256-HEX.sig after the digest of " +
		"the image's manifest; mkdwarfs --sign -o docker://... and dwarfsck --push push it with the image. " +
		"dwarfsck --verify, dwarfsextract --verify and dwarfs -o verify look for it there, as they look " +
		"for IMAGE.sig beside a file: docker://R/REPO:TAG is verified with docker://R/REPO:TAG.sig, " +
		"docker://R/REPO@sha256:HEX with docker://R/REPO:sha256-HEX.sig. The signature covers the image's " +
		"bytes, so a tag moved to another image between the two fetches fails verification.",
}
