#!/usr/bin/env escript
%% term-seed.escript - seeds for tests/fuzz/fuzz-term.c: answers of the
%% shapes `leakscope beam` asks a node for, each as the C node receives
%% it, {rex, Reply} in the external format, taken from this node.
%%
%%     escript tests/fuzz/term-seed.escript OUTDIR
-mode(compile).

main([Out]) ->
    Self = self(),
    Pids = lists:sublist(erlang:processes(), 5),
    Items = [memory, message_queue_len, current_function,
             registered_name, total_heap_size],
    Info = [{P, erlang:process_info(P, Items)} || P <- Pids],
    T = ets:new(seed, [set]),
    ets:insert(T, {key, <<"value">>}),
    Seeds = [
        {"memory", erlang:memory()},
        {"allocator", erlang:system_info(allocator)},
        {"alloc-binary", erlang:system_info({allocator, binary_alloc})},
        {"alloc-sizes", erlang:system_info({allocator_sizes, eheap_alloc})},
        {"processes", Pids},
        {"process-info", Info},
        {"ets-info", [ets:info(T)]},
        {"badrpc", {badrpc, {'EXIT', {undef, [{m, f, [1], []}]}}}},
        {"scalars", {1, -1, 255, 256, 1 bsl 40, -(1 bsl 62), 1 bsl 70,
                     3.25, -0.0, atom, 'an atom', "a string", "",
                     <<"binary">>, <<1:3>>, [], Self}},
        {"others", {make_ref(), hd(erlang:ports()), fun erlang:memory/0,
                    fun(X) -> X end, #{a => 1, "b" => [2]}}},
        {"improper", [1, 2 | 3]},
        {"nested", [[[[[{[a]}]]]]]},
        {"utf8-atom", ['ünïcode', {'Σ', "µ"}]}
    ],
    ok = filelib:ensure_dir(filename:join(Out, "x")),
    lists:foreach(
        fun({Name, Reply}) ->
            Bin = term_to_binary({rex, Reply}, [{minor_version, 2}]),
            ok = file:write_file(filename:join(Out, Name), Bin)
        end, Seeds);
main(_) ->
    io:format(standard_error, "usage: term-seed.escript OUTDIR~n", []),
    halt(2).
