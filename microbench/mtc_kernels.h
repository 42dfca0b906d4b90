/* mpicast MTC: every kernel the driver can run, one X-macro line each (defined in mtc_*.c). */
#define MTC_KERNELS(K)                                                                       \
    K(empty)                                                                                 \
    K(int_add_tp) K(int_add_lat) K(int_mul_tp) K(int_mul_lat) K(int_div_tp) K(int_div_lat)   \
    K(int_cmp_tp) K(int_cmp_lat) K(int_logic_tp) K(int_logic_lat)                            \
    K(float_add_tp) K(float_add_lat) K(float_mul_tp) K(float_mul_lat)                        \
    K(float_div_tp) K(float_div_lat) K(double_add_tp) K(double_add_lat)                      \
    K(double_mul_tp) K(double_mul_lat) K(double_div_tp) K(double_div_lat)                    \
    K(fp_cmp_tp) K(fp_cmp_lat) K(int_to_fp_tp) K(fp_to_int_tp) K(conv_roundtrip_lat)         \
    K(branch_tp) K(branch_miss) K(branch_pred) K(call_tp) K(call_lat)                        \
    K(sqrt_tp) K(sqrt_lat) K(exp_tp) K(exp_lat) K(log_tp) K(log_lat) K(sincos_tp)            \
    K(sincos_lat) K(pow_tp) K(pow_lat) K(fabs_tp) K(fabs_lat) K(rand_tp)                     \
    K(mem_stream_load) K(mem_stream_store) K(mem_chase_lat) K(mem_chase_tp)                  \
    K(mem_rand_store) K(mem_lcg_only) K(mem_stride_load) K(mem_stride2k_load) K(mem_first_touch) K(memcpy)         \
    K(memset) K(mem_overlap) K(mem_overlap_store)                                            \
    K(alloc) K(print_call) K(print_int) K(print_fp) K(write)                                 \
    K(cal_dot) K(cal_axpy) K(cal_stencil1d) K(cal_stencil2d) K(cal_dartboard)                \
    K(cal_histogram) K(cal_matmul) K(cal_saxpy_float) K(cal_sqrt_sum) K(cal_horner)          \
    K(cal_lcg) K(cal_mod) K(cal_list) K(cal_expdecay) K(cal_max) K(cal_memcpy_rows)          \
    MTC_MPI_KERNELS(K)

/* Kernels that call MPI: only in a driver built with an MPI compiler wrapper (mtc_io.c). */
#ifdef MTC_WITH_MPI
#define MTC_MPI_KERNELS(K) K(comm_create) K(comm_null)
#else
#define MTC_MPI_KERNELS(K)
#endif
