// A kernel for gpu/fatbin's tests: CMakeLists.txt builds it into shared libraries with chosen GPU code (nvcc
// -gencode), whose fat binaries the tests read back.
__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }

extern "C" void coldstart_fatbin_fixture(float* x) { scale<<<1, 32>>>(x, 2.0f); }
