package fusefs

// MountOptionsFrom lets the tests describe mounts with dwarfs -o lists.
var MountOptionsFrom = driverOptions
