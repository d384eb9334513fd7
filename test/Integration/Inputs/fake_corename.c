/* A stand-in for OpenBLAS's answer on a CPU whose model it does not know:
   preloaded before libopenblas, it makes openblas_get_corename() report
   Prescott's kernels (what OpenBLAS falls back to), whatever the library
   really loaded. Used by openblas-kernels.test. */
char *openblas_get_corename(void) { return (char *)"Prescott"; }
