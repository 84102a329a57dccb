# fish completion for dwarfs, generated from its option table by go run ./man.
complete -c dwarfs -l foreground -s f -d 'stay in the foreground'
complete -c dwarfs -l debug -s d -d 'stay in the foreground and print FUSE debug output'
complete -c dwarfs -l auto-mountpoint -d 'mount on a directory named after the image'
complete -c dwarfs -l options -s o -x -a 'cachesize= blocksize= readahead= workers= mlock= decratio= offset= imagesize= enable_nlink readonly case_insensitive cache_image no_cache_image cache_files no_cache_files cache_sparse no_cache_sparse no_xattr tidy_strategy= tidy_interval= tidy_max_age= seq_detector= uid= gid= preload_category= preload_all upper= work= analysis_file= verify= signature= nocheck block_allocator= perfmon debuglevel= remote_workers= remote_timeout= remote_attempts= disk_cache= disk_cache_size= s3_endpoint= s3_region= s3_path_style allow_other allow_root default_permissions fsname= subtype= nosuid suid nodev dev noexec exec ro auto_unmount max_threads= attach= clone_fd max_idle_threads=' -d 'mount options, see below'
complete -c dwarfs -l version -s V -d 'print the version and exit'
complete -c dwarfs -l help -s h -d 'print this help and exit'
complete -c dwarfs -l man -d 'print the manual page and exit'
