/* liblaya.so is the static library's objects linked whole (cmake/LayaInstall.cmake); a shared
 * library target needs one source file of its own, and this is it. */
typedef int laya_shared_stub_unused;
