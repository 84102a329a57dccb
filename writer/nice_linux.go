package writer

import "golang.org/x/sys/unix"

// niceThread adds inc to the calling thread's nice value (capped at 19),
// as the reference's --compress-niceness does for its compression
// threads. The caller must hold the thread (runtime.LockOSThread).
func niceThread(inc int) error {
	tid := unix.Gettid()
	cur, err := threadNice(tid)
	if err != nil {
		return err
	}
	return unix.Setpriority(unix.PRIO_PROCESS, tid, min(cur+inc, 19))
}

// threadNice is thread tid's nice value (the system call reports 20-nice).
func threadNice(tid int) (int, error) {
	raw, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	return 20 - raw, err
}
