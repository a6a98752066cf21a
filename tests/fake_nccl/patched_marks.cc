// A library whose read-only data holds the names of the parameters coldstart's NCCL patches register, as a patched
// build's .rodata does: what patches_in looks for, in a real ELF file, without building NCCL.
extern "C" const char* const coldstart_fake_patch_marks[] = {"NCCL_FD_TABLE_RESERVE", "NCCL_P2P_PEER_REGION"};
