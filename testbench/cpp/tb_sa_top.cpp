// Verilator harness for sa_top: replays a stimulus file cycle by cycle and
// writes what the output ports show in every cycle, in the same hex format
// the Rust emulator uses (testbench/src/stimulus.rs). Optional VCD for the
// register-level comparison.
//
//   Vsa_top <stimulus.txt> <ports.txt | -> [trace.vcd]
//
// Stimulus version 2 lines are `mode lr_shift dy_valid rst x.. w.. dy..`;
// version 3 (dense arrays, built with -DSG_DENSE) adds `op swap update load
// load_row` at the end;
// version 1 lines have no rst column (reset low throughout).
//
// Cycle t: inputs of line t applied with clk low, outputs sampled, then one
// rising edge. VCD time 10t is the pre-edge sample, 10t+5 the edge.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "Vsa_top.h"
#include "verilated.h"
#if VM_TRACE
#include "verilated_vcd_c.h"
#endif

namespace {

using Words = std::vector<uint32_t>;

// Packs lanes of `width` bits, lane k at bit k*width.
Words pack(const std::vector<uint64_t>& lanes, int width) {
    Words w((lanes.size() * width + 31) / 32 + 1, 0);
    for (size_t k = 0; k < lanes.size(); ++k)
        for (int b = 0; b < width; ++b)
            if ((lanes[k] >> b) & 1) {
                size_t bit = k * width + b;
                w[bit / 32] |= 1u << (bit % 32);
            }
    return w;
}

std::vector<uint64_t> unpack(const Words& w, size_t lanes, int width) {
    std::vector<uint64_t> out(lanes, 0);
    for (size_t k = 0; k < lanes; ++k)
        for (int b = 0; b < width; ++b) {
            size_t bit = k * width + b;
            if ((w[bit / 32] >> (bit % 32)) & 1) out[k] |= uint64_t(1) << b;
        }
    return out;
}

// Verilator stores ports of <= 64 bits as integers and wider ones as VlWide.
template <class T> void put(T& port, const Words& w) {
    uint64_t v = w[0] | (w.size() > 1 ? uint64_t(w[1]) << 32 : 0);
    port = static_cast<T>(v);
}
template <std::size_t N> void put(VlWide<N>& port, const Words& w) {
    for (size_t i = 0; i < N; ++i) port[i] = i < w.size() ? w[i] : 0;
}
template <class T> Words get(const T& port) {
    uint64_t v = static_cast<uint64_t>(port);
    return {uint32_t(v), uint32_t(v >> 32), 0};
}
template <std::size_t N> Words get(const VlWide<N>& port) {
    Words w(N + 1, 0);
    for (size_t i = 0; i < N; ++i) w[i] = port[i];
    return w;
}

std::vector<uint64_t> read_lanes(std::istringstream& in, int n) {
    std::vector<uint64_t> v(n);
    for (auto& x : v) in >> std::hex >> x;
    return v;
}

void write_lanes(std::ostream& out, const std::vector<uint64_t>& v) {
    for (auto x : v) out << ' ' << std::hex << x;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::cerr << "usage: " << argv[0] << " stimulus.txt ports.txt [trace.vcd]\n";
        return 2;
    }
    // A port-trace path of "-" skips sampling the outputs (for timing runs).
    const bool keep_ports = std::string(argv[2]) != "-";
    std::ifstream stim(argv[1]);
    std::ofstream out;
    if (keep_ports) out.open(argv[2]);
    if (!stim || (keep_ports && !out)) {
        std::cerr << "cannot open stimulus or output file\n";
        return 2;
    }
    std::string magic;
    int version = 0, R = 0, C = 0, DW = 0, AW = 0;
    stim >> magic >> version >> R >> C >> DW >> AW;
    if (magic != "sysgrad-stimulus" || version < 1 || version > 3) {
        std::cerr << "not a sysgrad stimulus file (version 1, 2 or 3)\n";
        return 2;
    }

    auto ctx = std::make_unique<VerilatedContext>();
    auto top = std::make_unique<Vsa_top>(ctx.get());
#if VM_TRACE
    std::unique_ptr<VerilatedVcdC> vcd;
    if (argc > 3) {
        ctx->traceEverOn(true);
        vcd = std::make_unique<VerilatedVcdC>();
        top->trace(vcd.get(), 99);
        vcd->open(argv[3]);
    }
    auto dump = [&](uint64_t t) { if (vcd) vcd->dump(t); };
#else
    auto dump = [](uint64_t) {};
#endif

    // One reset cycle, not part of the trace.
    top->clk = 0;
    top->rst = 1;
    top->eval();
    top->clk = 1;
    top->eval();
    top->clk = 0;
    top->rst = 0;
    top->eval();

    // Parse everything first so that the timed loop is simulation only.
    struct Cycle {
        unsigned mode, lr, dyv, rst;
        Words x, w, dy;
        // The wave's control (version 3, dense arrays).
        unsigned op, swap, update, load, load_row;
    };
    std::vector<Cycle> cycles;
    std::string line;
    std::getline(stim, line);  // rest of the header line
    while (std::getline(stim, line)) {
        if (line.empty()) continue;
        std::istringstream in(line);
        Cycle c{};
        in >> std::hex >> c.mode >> c.lr >> c.dyv;
        if (version >= 2) in >> c.rst;
        auto x = read_lanes(in, R);
        auto w = read_lanes(in, C);
        auto dy = read_lanes(in, C);
        if (version >= 3) in >> c.op >> c.swap >> c.update >> c.load >> c.load_row;
        if (!in) {
            std::cerr << "stimulus line " << cycles.size() + 2 << " is malformed\n";
            return 2;
        }
        c.x = pack(x, DW);
        c.w = pack(w, DW);
        c.dy = pack(dy, DW);
        cycles.push_back(std::move(c));
    }

    const auto start = std::chrono::steady_clock::now();
    uint64_t t = 0;
    for (const Cycle& c : cycles) {
        top->rst = c.rst;
        top->mode = c.mode;
        top->lr_shift = c.lr;
        top->dy_valid = c.dyv;
#ifdef SG_DENSE
        top->wave_op = c.op;
        top->wave_swap = c.swap;
        top->wave_update = c.update;
        top->wave_load = c.load;
        top->wave_load_row = c.load_row;
#endif
        put(top->x_in, c.x);
        put(top->w_in, c.w);
        put(top->dy_in, c.dy);
        top->clk = 0;
        top->eval();
        dump(10 * t);

        if (keep_ports) {
            write_lanes(out, unpack(get(top->y_out), C, AW));
            write_lanes(out, unpack(get(top->dx_out), R, AW));
            write_lanes(out, unpack(get(top->dw_out), R, AW));
            write_lanes(out, unpack(get(top->w_out), C, DW));
            out << '\n';
        }

        top->clk = 1;
        top->eval();
        dump(10 * t + 5);
        ++t;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "sim_seconds " << secs << " cycles " << t << "\n";
    top->final();
#if VM_TRACE
    if (vcd) vcd->close();
#endif
    return 0;
}
