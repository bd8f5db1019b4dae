// Verilator harness for sa_accel: plays a host script (AXI4-Lite register
// writes and reads, AXI4-Stream beats in and out, STATUS polling) against
// the accelerator with seeded random back-pressure, and writes the array's
// inputs in every cycle the controller runs, in the stimulus format of
// testbench/src/stimulus.rs.
//
//   Vsa_accel <script.txt> <out.txt> <trace.txt> <SEED> <GAP_PERCENT>
//
// SEED (decimal) seeds the xorshift generator of the gaps; each cycle, with
// probability GAP_PERCENT/100, a valid the host is about to raise stays low
// one more cycle (s_axis_tvalid, awvalid, wvalid, arvalid; once raised it
// is held until the handshake) and a ready is low (m_axis_tready, bready,
// rready).
//
// Script (hex numbers), first line `sysgrad-host 1 R C DW AW`, then one op a line:
//   w ADDR DATA   AXI4-Lite write (wstrb F), waits for B; out: `b ADDR RESP` if RESP != 0
//   r ADDR        AXI4-Lite read; out: `r ADDR DATA RESP`
//   i V1 V2 ...   pushes these 64-bit beats into s_axis (waits until all are taken)
//   o N           takes N beats from m_axis; out: `o V1 .. VN`, then `tlast_error`
//                 if m_axis_tlast was not exactly on the last beat
//   p             reads STATUS until RUNNING and DMA_BUSY are 0
// Protocol violations seen on the outputs (a valid dropped or its payload
// changed before the handshake) are written to out as `x CYCLE what`.
//
// Cycle: inputs change with clk low, outputs are sampled before the rising
// edge, one rising edge per cycle. The register offset and bits of STATUS
// come from config/src/host.rs as -D flags (SG_REG_STATUS, SG_STATUS_BUSY).
//
// Exit codes: 0 done, 2 bad arguments or malformed script, 3 timeout.
#include <cctype>
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
#include "Vsa_accel___024root.h"
#include "verilated.h"

#ifndef SG_REG_STATUS
#error "build with -DSG_REG_STATUS=<offset of STATUS> (testbench/src/accel.rs does)"
#endif
#ifndef SG_STATUS_BUSY
#error "build with -DSG_STATUS_BUSY=<RUNNING | DMA_BUSY bits> (testbench/src/accel.rs does)"
#endif

// An internal net of sa_accel (needs --public-flat-rw).
#define NET(name) (t->rootp->sa_accel__DOT__##name)

namespace {

using Words = std::vector<uint32_t>;

std::vector<uint64_t> unpack(const Words& w, size_t lanes, int width) {
    std::vector<uint64_t> out(lanes, 0);
    for (size_t k = 0; k < lanes; ++k)
        for (int b = 0; b < width; ++b) {
            size_t bit = k * width + b;
            if (bit / 32 < w.size() && ((w[bit / 32] >> (bit % 32)) & 1)) out[k] |= uint64_t(1) << b;
        }
    return out;
}

// Verilator stores nets of <= 64 bits as integers and wider ones as VlWide.
template <class T> Words get(const T& net) {
    uint64_t v = static_cast<uint64_t>(net);
    return {uint32_t(v), uint32_t(v >> 32), 0};
}
template <std::size_t N> Words get(const VlWide<N>& net) {
    Words w(N + 1, 0);
    for (size_t i = 0; i < N; ++i) w[i] = net[i];
    return w;
}

// Timeouts: a poll gives up after POLL_LIMIT cycles; any other op after
// STALL_LIMIT cycles without a handshake.
constexpr uint64_t POLL_LIMIT = 50000000;
constexpr uint64_t STALL_LIMIT = 1000000;

struct Op {
    char kind = 0;
    int line = 0;
    uint32_t addr = 0, data = 0;
    uint64_t n = 0;
    std::vector<uint64_t> beats;
};

[[noreturn]] void malformed(int line, const std::string& why) {
    std::cerr << "script line " << line << ": " << why << "\n";
    std::exit(2);
}

bool parse_hex(const std::string& s, uint64_t& v) {
    if (s.empty() || s.size() > 16) return false;
    for (char ch : s)
        if (!std::isxdigit(static_cast<unsigned char>(ch))) return false;
    v = std::stoull(s, nullptr, 16);
    return true;
}

std::vector<Op> parse(std::istream& in, int& R, int& C, int& DW, int& AW) {
    std::string line;
    if (!std::getline(in, line)) malformed(1, "empty script");
    {
        std::istringstream h(line);
        std::string magic, rest;
        int version = 0;
        if (!(h >> magic >> version >> R >> C >> DW >> AW) || magic != "sysgrad-host" || version != 1 ||
            (h >> rest))
            malformed(1, "expected the header `sysgrad-host 1 R C DW AW`");
        if (R < 1 || C < 1 || DW < 1 || DW > 64 || AW < 1 || AW > 64) malformed(1, "bad shape in the header");
    }
    std::vector<Op> ops;
    int no = 1;
    while (std::getline(in, line)) {
        ++no;
        std::istringstream s(line);
        std::vector<std::string> tok;
        for (std::string t; s >> t;) tok.push_back(t);
        if (tok.empty()) continue;
        Op op;
        op.line = no;
        if (tok[0].size() != 1) malformed(no, "unknown op `" + tok[0] + "`");
        op.kind = tok[0][0];
        std::vector<uint64_t> v(tok.size() - 1);
        for (size_t k = 1; k < tok.size(); ++k)
            if (!parse_hex(tok[k], v[k - 1])) malformed(no, "`" + tok[k] + "` is not a 64-bit hex number");
        auto want = [&](size_t n) {
            if (v.size() != n) malformed(no, std::string("`") + op.kind + "` takes " + std::to_string(n) + " numbers");
        };
        auto u32 = [&](uint64_t x) {
            if (x >> 32) malformed(no, "address or data wider than 32 bits");
            return uint32_t(x);
        };
        switch (op.kind) {
            case 'w':
                want(2);
                op.addr = u32(v[0]);
                op.data = u32(v[1]);
                break;
            case 'r':
                want(1);
                op.addr = u32(v[0]);
                break;
            case 'i':
                if (v.empty()) malformed(no, "`i` needs at least one beat");
                op.beats = std::move(v);
                break;
            case 'o':
                want(1);
                if (v[0] == 0) malformed(no, "`o 0` takes nothing");
                op.n = v[0];
                break;
            case 'p':
                want(0);
                break;
            default:
                malformed(no, "unknown op `" + tok[0] + "`");
        }
        ops.push_back(std::move(op));
    }
    return ops;
}

class Host {
public:
    Host(VerilatedContext* ctx, int R, int C, int DW, uint64_t seed, unsigned gap, FILE* out, FILE* trace)
        : top_(std::make_unique<Vsa_accel>(ctx)), R_(R), C_(C), DW_(DW), gap_(gap), out_(out),
          trace_(trace), rng_(seed ? seed : 0x9e3779b97f4a7c15ull) {}

    void reset() {
        idle_inputs();
        top_->rst = 1;
        for (int i = 0; i < 2; ++i) {
            settle();
            clock_edge(false);
        }
        top_->rst = 0;
        // Reset cycles are not cycles of the script.
        cycles_ = 0;
        stream_seen_ = b_seen_ = r_seen_ = false;
    }

    void play(const Op& op) {
        line_ = op.line;
        switch (op.kind) {
            case 'w': {
                uint32_t resp = write(op.addr, op.data);
                if (resp) std::fprintf(out_, "b %x %x\n", op.addr, resp);
                break;
            }
            case 'r': {
                uint32_t data = 0, resp = read(op.addr, data);
                std::fprintf(out_, "r %x %x %x\n", op.addr, data, resp);
                break;
            }
            case 'i':
                push(op.beats);
                break;
            case 'o':
                take(op.n);
                break;
            case 'p':
                poll();
                break;
        }
    }

    void finish() { top_->final(); }
    uint64_t cycles() const { return cycles_; }

private:
    Vsa_accel* top() { return top_.get(); }

    bool gap() {
        if (gap_ == 0) return false;
        rng_ ^= rng_ << 13;
        rng_ ^= rng_ >> 7;
        rng_ ^= rng_ << 17;
        return rng_ % 100 < gap_;
    }

    void idle_inputs() {
        auto* t = top();
        t->clk = 0;
        t->s_axil_awaddr = 0;
        t->s_axil_awvalid = 0;
        t->s_axil_wdata = 0;
        t->s_axil_wstrb = 0;
        t->s_axil_wvalid = 0;
        t->s_axil_bready = 0;
        t->s_axil_araddr = 0;
        t->s_axil_arvalid = 0;
        t->s_axil_rready = 0;
        t->s_axis_tdata = 0;
        t->s_axis_tvalid = 0;
        t->m_axis_tready = 0;
    }

    // Inputs of this cycle are set (clk low): evaluate, check the output
    // handshakes against the previous cycle.
    void settle() {
        auto* t = top();
        t->clk = 0;
        t->eval();
        if (stream_seen_ && !(t->m_axis_tvalid && t->m_axis_tdata == stream_data_ && t->m_axis_tlast == stream_last_))
            protocol("m_axis_tvalid dropped or m_axis_tdata/tlast changed before the beat was taken");
        if (b_seen_ && !(t->s_axil_bvalid && t->s_axil_bresp == b_resp_))
            protocol("s_axil_bvalid dropped or s_axil_bresp changed before bready");
        if (r_seen_ && !(t->s_axil_rvalid && t->s_axil_rdata == r_data_ && t->s_axil_rresp == r_resp_))
            protocol("s_axil_rvalid dropped or s_axil_rdata/rresp changed before rready");
    }

    void protocol(const char* what) {
        std::fprintf(out_, "x %llx %s (script line %d)\n", (unsigned long long)cycles_, what, line_);
    }

    // Outputs sampled: trace the array inputs if the controller runs, then
    // the rising edge, then clk low again.
    void clock_edge(bool count = true) {
        auto* t = top();
        // Pending valids seen now must still be there next cycle.
        stream_seen_ = t->m_axis_tvalid && !t->m_axis_tready;
        stream_data_ = t->m_axis_tdata;
        stream_last_ = t->m_axis_tlast;
        b_seen_ = t->s_axil_bvalid && !t->s_axil_bready;
        b_resp_ = t->s_axil_bresp;
        r_seen_ = t->s_axil_rvalid && !t->s_axil_rready;
        r_data_ = t->s_axil_rdata;
        r_resp_ = t->s_axil_rresp;
        if (count && NET(ctl_running)) write_trace();
        t->clk = 1;
        t->eval();
        t->clk = 0;
        t->eval();
        if (count) ++cycles_;
    }

    void write_trace() {
        auto* t = top();
        std::fprintf(trace_, "%x %x %x", unsigned(NET(arr_mode)), unsigned(NET(arr_lr_shift)),
                     unsigned(NET(arr_dy_valid)));
        auto lanes = [&](const Words& w, int n) {
            for (uint64_t v : unpack(w, n, DW_)) std::fprintf(trace_, " %llx", (unsigned long long)v);
        };
        lanes(get(NET(arr_x_in)), R_);
        lanes(get(NET(arr_w_in)), C_);
        lanes(get(NET(arr_dy_in)), C_);
#ifdef SG_DENSE
        std::fprintf(trace_, " %x %x %x %x %x", unsigned(NET(arr_wave_op)),
                     unsigned(NET(arr_wave_swap)), unsigned(NET(arr_wave_update)),
                     unsigned(NET(arr_wave_load)), unsigned(NET(arr_wave_load_row)));
#endif
        std::fputc('\n', trace_);
    }

    void stalled(uint64_t since, const char* what) {
        if (cycles_ - since > STALL_LIMIT) {
            std::fflush(out_);
            std::fflush(trace_);
            std::cerr << "script line " << line_ << ": " << what << " for " << STALL_LIMIT << " cycles (cycle "
                      << cycles_ << ")\n";
            std::exit(3);
        }
    }

    uint32_t write(uint32_t addr, uint32_t data) {
        auto* t = top();
        bool aw = true, w = true, aw_on = false, w_on = false;
        t->s_axil_awaddr = addr;
        t->s_axil_wdata = data;
        t->s_axil_wstrb = 0xF;
        uint64_t since = cycles_;
        while (aw || w) {
            // A valid is raised after a random delay and then held until taken.
            aw_on = aw_on || !gap();
            w_on = w_on || !gap();
            t->s_axil_awvalid = aw && aw_on;
            t->s_axil_wvalid = w && w_on;
            settle();
            bool aw_fire = t->s_axil_awvalid && t->s_axil_awready;
            bool w_fire = t->s_axil_wvalid && t->s_axil_wready;
            clock_edge();
            aw = aw && !aw_fire;
            w = w && !w_fire;
            stalled(since, "AXI4-Lite write address/data not accepted");
        }
        t->s_axil_awvalid = 0;
        t->s_axil_wvalid = 0;
        t->s_axil_wstrb = 0;
        since = cycles_;
        for (;;) {
            t->s_axil_bready = !gap();
            settle();
            bool fire = t->s_axil_bvalid && t->s_axil_bready;
            uint32_t resp = t->s_axil_bresp;
            clock_edge();
            if (fire) {
                t->s_axil_bready = 0;
                return resp;
            }
            stalled(since, "no AXI4-Lite write response");
        }
    }

    uint32_t read(uint32_t addr, uint32_t& data) {
        auto* t = top();
        bool on = false;
        t->s_axil_araddr = addr;
        uint64_t since = cycles_;
        for (;;) {
            on = on || !gap();
            t->s_axil_arvalid = on;
            settle();
            bool fire = t->s_axil_arvalid && t->s_axil_arready;
            clock_edge();
            if (fire) break;
            stalled(since, "AXI4-Lite read address not accepted");
        }
        t->s_axil_arvalid = 0;
        since = cycles_;
        for (;;) {
            t->s_axil_rready = !gap();
            settle();
            bool fire = t->s_axil_rvalid && t->s_axil_rready;
            data = t->s_axil_rdata;
            uint32_t resp = t->s_axil_rresp;
            clock_edge();
            if (fire) {
                t->s_axil_rready = 0;
                return resp;
            }
            stalled(since, "no AXI4-Lite read response");
        }
    }

    void push(const std::vector<uint64_t>& beats) {
        auto* t = top();
        size_t k = 0;
        bool on = false;
        uint64_t since = cycles_;
        while (k < beats.size()) {
            // Held low with probability GAP each cycle until raised, then
            // held high until taken (AXI4-Stream).
            on = on || !gap();
            t->s_axis_tvalid = on;
            t->s_axis_tdata = beats[k];
            settle();
            bool fire = on && t->s_axis_tready;
            clock_edge();
            if (fire) {
                ++k;
                on = false;
                since = cycles_;
            }
            stalled(since, "s_axis beat not taken");
        }
        t->s_axis_tvalid = 0;
        t->s_axis_tdata = 0;
    }

    void take(uint64_t n) {
        auto* t = top();
        std::vector<uint64_t> got;
        bool tlast_ok = true;
        uint64_t since = cycles_;
        while (got.size() < n) {
            t->m_axis_tready = !gap();
            settle();
            bool fire = t->m_axis_tvalid && t->m_axis_tready;
            uint64_t data = t->m_axis_tdata;
            bool last = t->m_axis_tlast;
            clock_edge();
            if (fire) {
                got.push_back(data);
                if (last != (got.size() == n)) tlast_ok = false;
                since = cycles_;
            }
            stalled(since, "no m_axis beat");
        }
        t->m_axis_tready = 0;
        std::fputc('o', out_);
        for (uint64_t v : got) std::fprintf(out_, " %llx", (unsigned long long)v);
        std::fputc('\n', out_);
        if (!tlast_ok) std::fputs("tlast_error\n", out_);
    }

    void poll() {
        uint64_t start = cycles_;
        for (;;) {
            uint32_t status = 0;
            read(SG_REG_STATUS, status);
            if ((status & SG_STATUS_BUSY) == 0) return;
            if (cycles_ - start > POLL_LIMIT) {
                std::fflush(out_);
                std::fflush(trace_);
                std::cerr << "script line " << line_ << ": STATUS still 0x" << std::hex << status << std::dec
                          << " (RUNNING or DMA_BUSY) after " << POLL_LIMIT << " cycles\n";
                std::exit(3);
            }
        }
    }

    std::unique_ptr<Vsa_accel> top_;
    int R_, C_, DW_;
    unsigned gap_;
    FILE* out_;
    FILE* trace_;
    uint64_t rng_;
    uint64_t cycles_ = 0;
    int line_ = 0;
    bool stream_seen_ = false, b_seen_ = false, r_seen_ = false;
    uint64_t stream_data_ = 0;
    bool stream_last_ = false;
    uint32_t b_resp_ = 0, r_data_ = 0, r_resp_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::cerr << "usage: " << argv[0] << " script.txt out.txt trace.txt SEED GAP_PERCENT\n";
        return 2;
    }
    uint64_t seed = 0, gap = 0;
    {
        std::istringstream s(argv[4]);
        if (!(s >> seed) || !s.eof()) {
            std::cerr << "SEED must be a decimal number\n";
            return 2;
        }
    }
    {
        std::istringstream g(argv[5]);
        if (!(g >> gap) || !g.eof() || gap > 100) {
            std::cerr << "GAP_PERCENT must be 0..=100\n";
            return 2;
        }
    }
    std::ifstream script(argv[1]);
    if (!script) {
        std::cerr << "cannot open " << argv[1] << "\n";
        return 2;
    }
    int R = 0, C = 0, DW = 0, AW = 0;
    std::vector<Op> ops = parse(script, R, C, DW, AW);

    FILE* out = std::fopen(argv[2], "w");
    FILE* trace = std::fopen(argv[3], "w");
    if (!out || !trace) {
        std::cerr << "cannot open the output files\n";
        return 2;
    }
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(1, argv);
    Host host(ctx.get(), R, C, DW, seed, unsigned(gap), out, trace);
    host.reset();
    for (const Op& op : ops) host.play(op);
    host.finish();
    std::fclose(out);
    std::fclose(trace);
    std::cerr << "cycles " << host.cycles() << "\n";
    return 0;
}
