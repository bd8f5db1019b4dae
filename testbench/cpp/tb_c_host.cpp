// Verilator host of sa_accel that reaches it only through the generated C
// driver (sa_accel.c, compiled as C99 and linked in): this file supplies the
// driver's two sa_io functions over the Verilated ports (AXI4-Lite register
// access and AXI4-Stream beats, with seeded random back-pressure) and plays
// a job: the host session the emulator ran, with what it read back.
//
//   Vsa_c_host <job.txt> <SEED> <GAP_PERCENT>
//
// Job (one op a line, numbers decimal unless noted), first line `sysgrad-job 2`:
//   mark LABEL              names the following ops in messages
//   write T ADDR N v...     sa_dma_write of N lines (N x lanes(T) values) to target T
//   program AT N w...       sa_write_program of N words (hex) from word AT
//   run S E H CODE PC       sa_select_program(S, E), sa_run_program; the emulator
//                           ended halted (H = 1) or faulted (H = 0) with CODE at word PC
//   read T ADDR N v...      sa_dma_read of N lines, compared with the values
//   counters N i v ...      sa_read_counters, compared for the N (index, value) pairs
//
// Output on stdout: `mismatch LABEL: what` lines, then
//   `done runs R words W counters C checkpoints K cycles N beats_in I beats_out O tlast T`
// Exit codes: 0 all equal, 1 a mismatch, 2 bad arguments or job, 3 a driver error.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "Vsa_accel.h"
#include "sa_accel.h"
#include "verilated.h"

namespace {

// A handshake that does not happen within this many cycles fails the call.
constexpr uint64_t STALL_LIMIT = 1000000;

class Port {
public:
    Port(VerilatedContext* ctx, uint64_t seed, unsigned gap)
        : t_(std::make_unique<Vsa_accel>(ctx)), gap_(gap), rng_(seed ? seed : 0x9e3779b97f4a7c15ull) {
        idle();
        t_->rst = 1;
        for (int i = 0; i < 2; ++i) edge();
        t_->rst = 0;
        cycles_ = 0;
    }
    ~Port() { t_->final(); }

    uint64_t cycles() const { return cycles_; }
    uint64_t tlasts() const { return tlasts_; }

    int reg(int write, uint32_t offset, uint32_t* value) {
        return write ? axil_write(offset, *value) : axil_read(offset, *value);
    }

    int stream(int direction, uint64_t* beats, size_t count) {
        return direction == SA_TO_DEVICE ? push(beats, count) : take(beats, count);
    }

private:
    bool gap() {
        if (gap_ == 0) return false;
        rng_ ^= rng_ << 13;
        rng_ ^= rng_ >> 7;
        rng_ ^= rng_ << 17;
        return rng_ % 100 < gap_;
    }

    void idle() {
        t_->clk = 0;
        t_->s_axil_awvalid = 0;
        t_->s_axil_wvalid = 0;
        t_->s_axil_wstrb = 0;
        t_->s_axil_bready = 0;
        t_->s_axil_arvalid = 0;
        t_->s_axil_rready = 0;
        t_->s_axis_tvalid = 0;
        t_->m_axis_tready = 0;
        t_->eval();
    }

    // Inputs are set with clk low; outputs were sampled by the caller.
    void edge() {
        t_->clk = 1;
        t_->eval();
        t_->clk = 0;
        t_->eval();
        ++cycles_;
    }

    int axil_write(uint32_t addr, uint32_t data) {
        bool aw = true, w = true, aw_on = false, w_on = false;
        t_->s_axil_awaddr = addr;
        t_->s_axil_wdata = data;
        t_->s_axil_wstrb = 0xF;
        for (uint64_t since = cycles_; aw || w;) {
            aw_on = aw_on || !gap();
            w_on = w_on || !gap();
            t_->s_axil_awvalid = aw && aw_on;
            t_->s_axil_wvalid = w && w_on;
            t_->eval();
            bool aw_fire = t_->s_axil_awvalid && t_->s_axil_awready;
            bool w_fire = t_->s_axil_wvalid && t_->s_axil_wready;
            edge();
            aw = aw && !aw_fire;
            w = w && !w_fire;
            if (cycles_ - since > STALL_LIMIT) return -1;
        }
        t_->s_axil_awvalid = 0;
        t_->s_axil_wvalid = 0;
        t_->s_axil_wstrb = 0;
        for (uint64_t since = cycles_;;) {
            t_->s_axil_bready = !gap();
            t_->eval();
            bool fire = t_->s_axil_bvalid && t_->s_axil_bready;
            uint32_t resp = t_->s_axil_bresp;
            edge();
            if (fire) {
                t_->s_axil_bready = 0;
                return resp != 0;
            }
            if (cycles_ - since > STALL_LIMIT) return -1;
        }
    }

    int axil_read(uint32_t addr, uint32_t& data) {
        bool on = false;
        t_->s_axil_araddr = addr;
        for (uint64_t since = cycles_;;) {
            on = on || !gap();
            t_->s_axil_arvalid = on;
            t_->eval();
            bool fire = t_->s_axil_arvalid && t_->s_axil_arready;
            edge();
            if (fire) break;
            if (cycles_ - since > STALL_LIMIT) return -1;
        }
        t_->s_axil_arvalid = 0;
        for (uint64_t since = cycles_;;) {
            t_->s_axil_rready = !gap();
            t_->eval();
            bool fire = t_->s_axil_rvalid && t_->s_axil_rready;
            data = t_->s_axil_rdata;
            uint32_t resp = t_->s_axil_rresp;
            edge();
            if (fire) {
                t_->s_axil_rready = 0;
                return resp != 0;
            }
            if (cycles_ - since > STALL_LIMIT) return -1;
        }
    }

    int push(const uint64_t* beats, size_t count) {
        size_t k = 0;
        bool on = false;
        for (uint64_t since = cycles_; k < count;) {
            on = on || !gap();
            t_->s_axis_tvalid = on;
            t_->s_axis_tdata = beats[k];
            t_->eval();
            bool fire = on && t_->s_axis_tready;
            edge();
            if (fire) {
                ++k;
                on = false;
                since = cycles_;
            }
            if (cycles_ - since > STALL_LIMIT) return -1;
        }
        t_->s_axis_tvalid = 0;
        return 0;
    }

    int take(uint64_t* beats, size_t count) {
        size_t k = 0;
        for (uint64_t since = cycles_; k < count;) {
            t_->m_axis_tready = !gap();
            t_->eval();
            bool fire = t_->m_axis_tvalid && t_->m_axis_tready;
            uint64_t data = t_->m_axis_tdata;
            bool last = t_->m_axis_tlast;
            edge();
            if (fire) {
                beats[k++] = data;
                tlasts_ += last;
                since = cycles_;
            }
            if (cycles_ - since > STALL_LIMIT) return -1;
        }
        t_->m_axis_tready = 0;
        return 0;
    }

    std::unique_ptr<Vsa_accel> t_;
    unsigned gap_;
    uint64_t rng_;
    uint64_t cycles_ = 0, tlasts_ = 0;
};

extern "C" int port_reg(void* ctx, int write, uint32_t offset, uint32_t* value) {
    return static_cast<Port*>(ctx)->reg(write, offset, value);
}

extern "C" int port_stream(void* ctx, int direction, uint64_t* beats, size_t count) {
    return static_cast<Port*>(ctx)->stream(direction, beats, count);
}

[[noreturn]] void bad_job(int line, const std::string& why) {
    std::cerr << "job line " << line << ": " << why << "\n";
    std::exit(2);
}

struct Player {
    sa_dev dev{};
    std::string label = "start";
    int line = 0;
    unsigned long runs = 0, words = 0, counters = 0, checkpoints = 0, mismatches = 0;
    // Command memory: a program written since the last run, and the last
    // PROG_START and PROG_LEN chosen.
    bool written = false;
    unsigned selected[2] = {~0u, ~0u};

    void mismatch(const std::string& what) {
        ++mismatches;
        std::cout << "mismatch " << label << ": " << what << "\n";
    }

    [[noreturn]] void failed(const char* call, sa_result r) {
        std::cout << "driver " << label << ": " << call << " returned " << sa_result_name(r);
        if (r == SA_E_DMA) {
            const char* n = sa_dma_error_name(sa_last_dma_error(&dev));
            std::cout << " (DMA error " << (n ? n : "?") << ")";
        }
        std::cout << " (job line " << line << ")\n";
        std::exit(3);
    }

    template <class T> std::vector<T> values(std::istringstream& s, size_t n, bool hex = false) {
        std::vector<T> v(n);
        for (auto& x : v)
            if (!(s >> (hex ? std::hex : std::dec) >> x)) bad_job(line, "too few values");
        return v;
    }

    void play(const std::string& text) {
        std::istringstream s(text);
        std::string op;
        if (!(s >> op)) return;
        if (op == "mark") {
            std::getline(s >> std::ws, label);
        } else if (op == "write" || op == "read") {
            unsigned t = 0, addr = 0, n = 0;
            if (!(s >> t >> addr >> n)) bad_job(line, "expected T ADDR N");
            auto v = values<int64_t>(s, size_t(n) * sa_target_lanes(t));
            if (op == "write") {
                if (sa_result r = sa_dma_write(&dev, t, addr, n, v.data())) failed("sa_dma_write", r);
                return;
            }
            std::vector<int64_t> got(v.size());
            if (sa_result r = sa_dma_read(&dev, t, addr, n, got.data())) failed("sa_dma_read", r);
            words += v.size();
            for (size_t i = 0; i < v.size(); ++i)
                if (got[i] != v[i]) {
                    unsigned lanes = sa_target_lanes(t);
                    mismatch(std::string(sa_target_name(t)) + " line " + std::to_string(addr + i / lanes) +
                             " lane " + std::to_string(i % lanes) + " reads " + std::to_string(got[i]) +
                             " through the driver, " + std::to_string(v[i]) + " in the emulator");
                    return;
                }
        } else if (op == "program") {
            size_t at = 0, n = 0;
            if (!(s >> at >> n)) bad_job(line, "expected AT N");
            auto w = values<uint64_t>(s, n, true);
            if (sa_result r = sa_write_program(&dev, unsigned(at), w.data(), unsigned(n)))
                failed("sa_write_program", r);
            written = true;
        } else if (op == "run") {
            int halted = 0;
            unsigned start = 0, end = 0, code = 0, pc = 0;
            if (!(s >> start >> end >> halted >> code >> pc)) bad_job(line, "expected S E H CODE PC");
            // The registers are written when they change or after a load.
            if (written || start != selected[0] || end != selected[1])
                if (sa_result r = sa_select_program(&dev, start, end)) failed("sa_select_program", r);
            written = false;
            selected[0] = start;
            selected[1] = end;
            sa_run run{};
            sa_result r = sa_run_program(&dev, &run);
            if (r != SA_OK && r != SA_E_FAULT) failed("sa_run_program", r);
            ++runs;
            char got[256];
            sa_describe_run(&run, got, sizeof got);
            if (run.halted != (halted != 0) || run.faulted == (halted != 0) || run.error != code || run.pc != pc)
                mismatch(std::string("run ") + got + ", the emulator " + (halted ? "halted" : "faulted") +
                         " at word " + std::to_string(pc) + " (error " + std::to_string(code) + ")");
        } else if (op == "counters") {
            size_t n = 0;
            if (!(s >> n)) bad_job(line, "expected N");
            std::vector<uint64_t> all(SA_COUNTER_COUNT);
            if (sa_result r = sa_read_counters(&dev, all.data())) failed("sa_read_counters", r);
            ++checkpoints;
            for (size_t k = 0; k < n; ++k) {
                unsigned i = 0;
                uint64_t want = 0;
                if (!(s >> i >> want) || i >= SA_COUNTER_COUNT) bad_job(line, "expected index and value");
                ++counters;
                if (all[i] != want)
                    mismatch(std::string("counter ") + sa_counter_name(i) + " is " + std::to_string(all[i]) +
                             " through the driver, " + std::to_string(want) + " in the emulator");
            }
        } else {
            bad_job(line, "unknown op `" + op + "`");
        }
    }
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::cerr << "usage: " << argv[0] << " job.txt SEED GAP_PERCENT\n";
        return 2;
    }
    uint64_t seed = std::strtoull(argv[2], nullptr, 10);
    unsigned gap = unsigned(std::strtoul(argv[3], nullptr, 10));
    if (gap > 95) {
        std::cerr << "GAP_PERCENT must be 0..=95\n";
        return 2;
    }
    std::ifstream job(argv[1]);
    std::string text;
    if (!job || !std::getline(job, text) || text != "sysgrad-job 2") {
        std::cerr << "cannot read a job (first line `sysgrad-job 2`) from " << argv[1] << "\n";
        return 2;
    }
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(1, argv);
    Port port(ctx.get(), seed, gap);
    Player p;
    p.line = 1;
    sa_io io{port_reg, port_stream, &port};
    if (sa_result r = sa_open(&p.dev, &io)) p.failed("sa_open", r);
    while (std::getline(job, text)) {
        ++p.line;
        p.play(text);
    }
    std::cout << "done runs " << p.runs << " words " << p.words << " counters " << p.counters << " checkpoints "
              << p.checkpoints << " cycles " << port.cycles() << " beats_in " << p.dev.beats_in << " beats_out "
              << p.dev.beats_out << " tlast " << port.tlasts() << "\n";
    return p.mismatches ? 1 : 0;
}
