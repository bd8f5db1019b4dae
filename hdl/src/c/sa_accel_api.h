/* ---- The driver (sa_accel.c). ----

   The driver touches the hardware only through the two functions of an
   sa_io, so the same code runs against a Verilated model and on an SoC:

   reg:    one 32-bit AXI4-Lite access at byte offset `offset`: a write of
           *value when `write` is nonzero, else a read into *value. Returns
           0 for an OKAY response, nonzero otherwise (SLVERR, bus error).
   stream: moves `count` 64-bit beats: SA_TO_DEVICE pushes beats[0..count)
           into s_axis, SA_FROM_DEVICE takes `count` beats from m_axis into
           beats (the accelerator raises m_axis_tlast on the last one of a
           DMA read). Returns 0 when all beats moved, nonzero otherwise.

   A call returns SA_OK or the first problem met; sa_last_dma_error() and
   the sa_run fields tell what the accelerator reported. */

#define SA_TO_DEVICE 0
#define SA_FROM_DEVICE 1

typedef struct sa_io {
    int (*reg)(void *ctx, int write, uint32_t offset, uint32_t *value);
    int (*stream)(void *ctx, int direction, uint64_t *beats, size_t count);
    void *ctx;
} sa_io;

typedef enum sa_result {
    SA_OK = 0,
    SA_E_BUS,     /* a register access was refused (SLVERR) */
    SA_E_STREAM,  /* the stream function failed */
    SA_E_ID,      /* ID does not read SA_ID_VALUE: no sa_accel at this address */
    SA_E_SHAPE,   /* SHAPE or COUNTER_WIDTH differ from this header's: another configuration */
    SA_E_ARG,     /* a NULL pointer, or more program words than command memory */
    SA_E_DMA,     /* the accelerator refused or saturated a transfer (sa_last_dma_error) */
    SA_E_TIMEOUT, /* still RUNNING or DMA_BUSY after poll_limit STATUS reads */
    SA_E_FAULT,   /* the program stopped at a bad command (sa_run.error, .pc) */
    SA_E_FORMAT   /* FORMAT differs from SA_FORMAT_VALUE: its words mean other numbers */
} sa_result;

typedef struct sa_dev {
    sa_io io;
    /* STATUS reads before a wait gives up (sa_open sets a default). */
    unsigned long poll_limit;
    /* Move data in packed beats (DMA_CTRL + SA_DMA_PACKED); sa_open sets it. */
    int packed;
    unsigned last_dma_error;
    /* Beats moved by this driver, both ways. */
    uint64_t beats_in, beats_out;
} sa_dev;

/* How a run ended. */
typedef struct sa_run {
    uint32_t status; /* the STATUS register at the end */
    uint32_t pc;     /* the HALT's or the faulting command's word */
    unsigned error;  /* the command error code (0 if halted) */
    int halted, faulted;
} sa_run;

/* Checks ID, SHAPE and COUNTER_WIDTH, then FORMAT (SA_E_FORMAT: another
   number format, whose words this header would misread), and sets the
   defaults. */
sa_result sa_open(sa_dev *dev, const sa_io *io);

/* DMA of `lines` lines from line `line` of `target` (SA_TARGET_*): `words`
   holds lines x sa_target_lanes(target) words, line after line: signed
   values, or where SA_PATTERN_BITS_<target> is nonzero (a float format)
   bit patterns, which a read zero-extends. A write waits until the
   accelerator has taken every beat. */
sa_result sa_dma_write(sa_dev *dev, unsigned target, unsigned line, unsigned lines,
                       const int64_t *words);
sa_result sa_dma_read(sa_dev *dev, unsigned target, unsigned line, unsigned lines, int64_t *words);

/* The program into command memory from word 0, then PROG_START = 0 and
   PROG_LEN = count. */
sa_result sa_load_program(sa_dev *dev, const uint64_t *words, unsigned count);
/* A program into command memory from word `first` (no register): several
   programs may be kept at their own words. */
sa_result sa_write_program(sa_dev *dev, unsigned first, const uint64_t *words, unsigned count);
/* PROG_START = start, PROG_LEN = end: START runs words start..end. */
sa_result sa_select_program(sa_dev *dev, unsigned start, unsigned end);
/* START; then STATUS is polled until the run is over. */
sa_result sa_start(sa_dev *dev);
sa_result sa_wait(sa_dev *dev, sa_run *run);
/* START and wait; SA_E_FAULT if the program faulted. */
sa_result sa_run_program(sa_dev *dev, sa_run *run);

sa_result sa_read_counter(sa_dev *dev, unsigned index, uint64_t *value);
/* Every counter, values[SA_COUNTER_COUNT]. */
sa_result sa_read_counters(sa_dev *dev, uint64_t *values);
sa_result sa_clear_counters(sa_dev *dev);

/* Lanes (words) of a line of `target`, 0 if it is no target. */
unsigned sa_target_lanes(unsigned target);
/* Beats moving `lines` lines of `target` take (packed or not). */
unsigned long sa_dma_beats(unsigned target, unsigned lines, int packed);
unsigned sa_last_dma_error(const sa_dev *dev);

/* Names: NULL for codes that are none. */
const char *sa_result_name(sa_result r);
const char *sa_error_name(unsigned code);
const char *sa_error_message(unsigned code);
const char *sa_dma_error_name(unsigned code);
const char *sa_dma_error_message(unsigned code);
const char *sa_counter_name(unsigned index);
const char *sa_counter_meaning(unsigned index);
const char *sa_target_name(unsigned target);
/* Whether counter `index` counts host-side timing (stalls, idle cycles). */
int sa_counter_host_only(unsigned index);
/* One line on how a run ended, e.g. "faulted at word 2: TILE_TOO_LARGE (...)";
   returns what snprintf returns. */
int sa_describe_run(const sa_run *run, char *buf, size_t size);
