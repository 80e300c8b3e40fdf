"""Which tests run alone: scripts/run-tests.sh runs the suite in two processes (pytest-xdist) and
then, by themselves, the tests marked `serial`: those whose verdict depends on measured timings (a
real slowdown flagged or not, a thief's bandwidth against STREAM) or that train on both cores at
once (gpt2-mpi's ranks, several threads each). Every test of the files below is serial; elsewhere a
test says so itself (`@pytest.mark.serial`). Tests whose times come from the fake variant
(tests/harness/fake_variant.py makes them up), bad input and one-line errors are not serial, even
under mpirun or Slurm: another process beside them changes how long they take, not what they
check."""

import signal

import pytest

import components  # tests/components.py: what a test needs that a machine may lack

# The long tier: tests that repeat what make test already checks once, over a whole matrix or many
# times (every chunking, a false-flag rate, backward compatibility with each older layout), on more
# ranks or inputs, or in a second scenario of one feature, and long end-to-end runs of what a
# shorter test covers. Each entry's comment says what make test keeps. `make test` leaves them out to stay within
# minutes on 2 cores; `make test-all` runs them too and `make test-long` alone (docs/testing.md).
# A name with a parameter id marks that case only; without one, every case of the test.
LONG_TESTS = {
    # the whole bit-identity matrix; make test runs a sample of every variant and compiler
    "test_correctness.py::test_parallel_variants_are_bit_identical_to_seq",
    "test_correctness.py::test_runtime_variants_are_bit_identical_to_seq",
    # the portable products, built without -m flags: the native, AVX2 and emulated ones stay
    "test_units.py::test_unit[test_gemm-gcc-generic]",
    "test_units.py::test_unit[test_gemm-clang-generic]",
    # the detector's false-flag rates over many comparisons; one self-comparison stays
    "test_regression.py::test_ten_self_comparisons_of_separate_sweeps_flag_nothing",
    "test_regression.py::test_family_wise_false_flag_rate_stays_at_alpha",
    "test_regression.py::test_compare_same_fake_build_exits_0[1]",
    "test_regression.py::test_compare_same_fake_build_exits_0[3]",
    "test_regression.py::test_regress_real_binaries_same_build_is_not_flagged",
    "test_regression.py::test_regress_default_base_is_the_parent_on_main",
    # the fake binaries confined to one CPU; the real binaries' 8x slowdown, found and confirmed by
    # regress, and the fake commit's slowdown stay
    "test_regression.py::test_regress_wrapped_candidate_on_one_cpu_is_flagged_with_the_fake",
    # older layouts and provenance warnings; the layout from before tiles_per_product stays
    "test_report.py::test_a_results_directory_from_before_tile_sequences_still_reports",
    "test_report.py::test_a_results_directory_written_by_an_older_harness_still_reports",
    "test_predict.py::test_graphs_kept_from_another_build_are_named",
    "test_predict.py::test_ceilings_from_another_boot_of_the_machine_are_named",
    # a second whole study, stopped; the complete one stays
    "test_studies.py::test_a_study_stopped_midway_still_leaves_its_archive",
    # the kernel benchmark's runs (bench/variants.py's saved run and summary stay; the kernel
    # benchmark's verdicts on saved directories stay)
    "test_bench_kernels.py::test_an_avx2_run_holds_the_step_to_the_avx2_peak",
    "test_bench_kernels.py::test_a_run_is_saved_and_its_summary_printed_again",
    "test_bench_kernels.py::test_rounds_alternate_the_order_and_hold_each_run_to_the_peak_measured_before_it",
    # bench/variants.py's whole saved run with the six repetitions a verdict needs; the same run twice
    # (every point, the traced runs, the summary printed again) and the verdicts on saved runs stay
    "test_bench_verdict.py::test_a_run_is_saved_in_a_new_directory_and_its_summary_can_be_printed_again[6]",
    "test_analysis.py::test_analysis_can_be_switched_off",
    "test_analysis.py::test_roofline_skips_the_warmup_steps_the_run_recorded",
    # bootstrap intervals over the largest committed recording
    "test_validation.py::test_prediction_intervals_cover_the_measured_points",
    # instruction counts under valgrind, twice over; the history of counts stays
    "test_instructions.py::test_counts_are_identical_across_runs_and_a_2_percent_kernel_change_is_flagged_there_only",
    "test_faults.py::test_report_of_a_path_with_dotdot_writes_inside_the_plots_root",
    # hostile headers on every variant (the loader is shared); each case on seq and one other in turn stays
    "test_hostile_headers.py::test_hostile_checkpoints_are_refused[every-variant]",
    "test_hostile_headers.py::test_hostile_debug_states_are_refused[every-variant]",
    "test_hostile_headers.py::test_hostile_token_files_are_refused[every-variant]",
    # the task limit of --check on every chunked variant; tasks' stays
    "test_check_limits.py::test_check_refuses_a_chunking_over_the_task_limit_as_the_run_does[taskiter]",
    "test_check_limits.py::test_check_refuses_a_chunking_over_the_task_limit_as_the_run_does[nosv]",
    "test_check_limits.py::test_check_refuses_a_chunking_over_the_task_limit_as_the_run_does[starpu]",
    # the cluster node's make run (a sweep and its report), its build from nothing, default study and
    # budgeted study (minutes); make, make deps and doctor on the node stay
    "test_cluster_node.py::test_a_whole_study_from_scratch_comes_home_as_one_archive",
    "test_cluster_node.py::test_make_run_completes_without_apt",
    # a whole study inside a Slurm batch job (a minute of budget); the sweeps through Slurm stay
    "test_slurm.py::test_the_study_batch_script_leaves_its_archive",
    # Slurm's second and third scenarios: a cancelled job, a resumed sweep, the probes in a job; a
    # sweep through Slurm end to end, srun inside a job and a failed sbatch (one line, exit 2) stay
    "test_slurm.py::test_cancelled_job_is_recorded_with_its_reason_and_the_sweep_goes_on",
    "test_slurm.py::test_interrupted_slurm_sweep_resumes_without_resubmitting",
    "test_slurm.py::test_a_slurm_job_probes_its_threads_before_and_after_the_run",
    # bench/variants.py's saved run with every point twice; --targets-only on the real binaries (the
    # same script, its saved directory) and the verdicts on saved runs stay
    "test_bench_verdict.py::test_a_run_is_saved_in_a_new_directory_and_its_summary_can_be_printed_again[2]",
    # a second resume and a second interrupt; the interrupted sweep resumed without measuring a run
    # twice (test_run.py) and Ctrl-C at start-up of report stay
    "test_faults.py::test_two_resumes_of_one_sweep_never_measure_a_run_twice",
    "test_faults.py::test_an_interrupt_while_the_ceilings_are_measured_still_tabulates",
    "test_reliability.py::test_ctrl_c_at_start_up_is_no_traceback[command1]",
    # a second race for one results directory; a second sweep of a busy directory (one line naming
    # its holder, exit 2) stays
    "test_reliability.py::test_three_runs_of_one_config_at_once_make_one_directory",
    # the other damaged journal lines and step times read back; the null line and nan stay
    r"test_reliability.py::test_a_damaged_journal_line_is_passed_over_on_resume[\xff\xfe not utf-8\n]",
    r"test_reliability.py::test_a_damaged_journal_line_is_passed_over_on_resume[[1, 2]\n]",
    "test_faults.py::test_step_times_read_back_are_checked[inf-inf]",
    "test_faults.py::test_step_times_read_back_are_checked[-0.5--0.5]",
    "test_faults.py::test_step_times_read_back_are_checked[fast-fast]",
    "test_faults.py::test_step_times_read_back_are_checked[-(empty)]",
    # regress of one commit against itself; regress finding and confirming a commit's slowdown (its
    # history rows), compare of one build twice exiting 0 and history's plots (test_instructions.py) stay
    "test_regression.py::test_regress_same_commit_exits_0_and_history_tracks_it",
    # the real binaries' eight-times slowdown under regress (a minute of serial time); the fake
    # commit's slowdown found and confirmed by regress end to end stays
    "test_regression.py::test_regress_real_binaries_doing_eight_times_the_work_is_flagged",
    # the report's PDFs and the HTML report in Chromium (layout at each width); report --figures
    # paper (run by the HTML tests' fixture), the paper figures' print sizes, the real figures and
    # table of report, and the self-contained report.html stay
    "test_report_figures.py::test_report_writes_paper_figures_as_vector_pdf_with_their_data",
    "test_report_html.py::test_report_opens_in_headless_chromium",
    "test_report_html.py::test_report_fits_the_page_and_names_the_cpu",
    "test_report_html.py::test_sections_lead_with_a_figure_or_a_verdict_and_fit_at_1300_px",
    # a second chunking knob swept, and the roofline of real chunked runs; a sweep over
    # tiles_per_product and the roofline's verdict on a report (and on hand-made traces) stay
    "test_run.py::test_a_sweep_over_tile_sequences",
    "test_roofline.py::test_roofline_of_a_sweep_whose_chunkings_pack_and_do_not",
    # a killed noise study; the noise study run quiet and disturbed and checked stays
    "test_noise_study.py::test_a_killed_noise_study_leaves_no_sweep_running_undisturbed",
    # traces of an older layout (without CPU times); CPU times within wall times stay
    "test_dedicated.py::test_older_traces_without_cpu_times",
    # a sweep where every run timed out; every run failed stays
    "test_edges.py::test_report_of_a_sweep_where_every_run_timed_out",
    # bounded fuzzing of four targets; every target's corpus replay and the checkpoint's fuzzing stay
    "test_fuzz.py::test_bounded_fuzzing_finds_nothing[tokens]",
    "test_fuzz.py::test_bounded_fuzzing_finds_nothing[debug_state]",
    "test_fuzz.py::test_bounded_fuzzing_finds_nothing[losses]",
    "test_fuzz.py::test_bounded_fuzzing_finds_nothing[options]",
    # hostile debug states and token files; hostile checkpoints on seq and one other variant in turn,
    # the limits of B, T and tasks, and the corpora of both readers stay
    "test_hostile_headers.py::test_hostile_debug_states_are_refused[rotating]",
    "test_hostile_headers.py::test_hostile_token_files_are_refused[rotating]",
    # the task graph's unit test built by clang; gcc's stays
    "test_units.py::test_unit[test_taskgraph-clang]",
    # the communication channels beyond one bit-identity check: 1 and 3 ranks, 4 ranks, the direct
    # collective, the runtime executors; 2 ranks, the trace record and bad channel counts stay
    "test_comm_threads.py::test_channels_give_the_bits_of_one_up_to_3_ranks[1]",
    "test_comm_threads.py::test_channels_give_the_bits_of_one_up_to_3_ranks[3]",
    "test_comm_threads.py::test_channels_at_4_ranks_are_close_to_one_and_repeatable",
    "test_comm_threads.py::test_direct_collective_gives_the_same_bits_on_every_channel_count",
    "test_comm_threads.py::test_runtime_executors_with_channels_are_taskiter",
    # gpt2-mpi's bit-identity at 1 and 3 ranks, B=4, and 3 ranks of each runtime; 2 ranks of every
    # executor (ring, direct, overlap), B=3, and 2 ranks of nosv and starpu stay
    "test_mpi.py::test_ring_and_direct_collectives_at_1_2_3_ranks_every_executor[1]",
    "test_mpi.py::test_ring_and_direct_collectives_at_1_2_3_ranks_every_executor[3]",
    "test_mpi.py::test_overlap_at_1_2_3_ranks_every_executor[1]",
    "test_mpi.py::test_overlap_at_1_2_3_ranks_every_executor[3]",
    "test_mpi.py::test_mpi_is_seq_up_to_rounding_and_bit_identical_across_executors_threads_repeats[4]",
    "test_mpi.py::test_runtime_executors_on_every_rank_are_taskiter[nosv-3]",
    "test_mpi.py::test_runtime_executors_on_every_rank_are_taskiter[starpu-3]",
    # a rank killed in the other cases; sharded at 2 ranks stays
    "test_mpi.py::test_a_rank_killed_mid_step_ends_the_job[sharded-3]",
    "test_mpi.py::test_a_rank_killed_mid_step_ends_the_job[replicated-2]",
    "test_mpi.py::test_a_rank_killed_mid_step_ends_the_job[replicated-3]",
    # the collectives alone at 1, 2, 4 and 5 ranks; 3 ranks (not a power of two, buffers fewer than
    # the ranks and not divisible by them) stays
    "test_collectives.py::test_collectives_are_the_documented_sums[1]",
    "test_collectives.py::test_collectives_are_the_documented_sums[2]",
    "test_collectives.py::test_collectives_are_the_documented_sums[4]",
    "test_collectives.py::test_collectives_are_the_documented_sums[5]",
    # weak scaling on the real gpt2-mpi; its strong scaling sweep and the knobs' sweep stay
    "test_mpi_sweep.py::test_ranks_sweep_with_mpirun[weak]",
}

SERIAL_FILES = {
    "test_mpi_sweep.py",           # ranks sweeps of the real gpt2-mpi through the harness
    "test_membound.py",            # the thief's bandwidth against STREAM, sensitivity runs
    "test_ceilings.py",            # STREAM and peak FLOP/s measured
}


# Beside each other (--dist loadgroup), a file's tests go to one process, so that its module and
# session fixtures (a finished sweep, a build) are made once; the tests of these files share none
# and are handed out one by one, so that neither process is left with a whole long file at the end.
# test_units.py's fixture is an incremental make (a no-op once built), and its two portable GEMM tests
# take 25 s each; the benchmark and study files have no fixtures at all (together 3 minutes
# of one process, and make test at 10:07 with them grouped)
EACH_TEST_ALONE = {"test_correctness.py", "test_regression.py", "test_mpi.py", "test_units.py",
                   "test_bench_kernels.py", "test_bench_verdict.py", "test_studies.py"}
# the work that takes longest, handed out first (a process asks for more work as it runs out): a long
# one started last would finish alone. The files whose tests go to one process, longest first, then
# those handed out test by test, which fill in around them
LONGEST_FIRST = ["test_run.py", "test_reliability.py", "test_hostile_headers.py", "test_edges.py", "test_faults.py",
                 "test_predict.py", "test_report.py", "test_report_html.py", "test_dedicated.py", "test_slurm.py",
                 "test_correctness.py", "test_regression.py", "test_mpi.py", "test_units.py", "test_bench_verdict.py",
                 "test_fuzz.py", "test_bench_kernels.py", "test_instructions.py"]


def pytest_configure(config):
    # Tests interrupt sweeps with SIGINT, as Ctrl-C would. A shell starts a background job (`make
    # test &`, nohup) with SIGINT ignored, which every child inherits, perfstudy too: its Ctrl-C
    # handling then never runs and those tests fail. Python's own handler is reset to the default
    # at exec, so the processes the tests start see Ctrl-C as a terminal's user would.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    config.addinivalue_line("markers", "serial: runs alone (timings, or both cores), not beside other tests")
    config.addinivalue_line("markers", "long: the long tier, left out of make test (LONG_TESTS)")
    config.addinivalue_line("markers", "needs(*components): skipped where one is missing (tests/components.py)")


def pytest_runtest_setup(item):
    wanted = {name for mark in item.iter_markers("needs") for name in mark.args}
    if hasattr(item, "callspec"):
        wanted |= components.needed_by_parameters(item.callspec.params)
    for name in sorted(wanted):
        components.require(name)


def is_long(item):
    return f"{item.path.name}::{item.name}" in LONG_TESTS or f"{item.path.name}::{item.originalname}" in LONG_TESTS


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SERIAL_FILES:
            item.add_marker("serial")
        if is_long(item):
            item.add_marker("long")
    # pytest-xdist's workers collect with `dist` reset to "no" and `loadgroup` set instead; the
    # groups must be marked there, where the node ids the scheduler splits on are made
    if getattr(config.option, "dist", "no") != "loadgroup" and not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        name = item.path.name
        item.add_marker(pytest.mark.xdist_group(item.nodeid if name in EACH_TEST_ALONE else str(item.path)))
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's tests stay together
