defmodule Leakscope do
  @moduledoc """
  The leakscope agent's view of this VM, from iex.

  Start the VM under the agent (`leakscope run -- iex ...` or with
  `LD_PRELOAD` set to `libleakscope.so`), put leakscope's ebin directory on
  the code path, then `Leakscope.olds(3)`, `Leakscope.stats()`,
  `Leakscope.reset()`, `Leakscope.report(format: :json)`,
  `Leakscope.growing()`.  Without the agent every call returns
  `{:error, :no_agent}`.  A thin layer over the Erlang module `:leakscope`
  (docs/ERLANG.md); unknown frame parts are `nil` here.
  """

  @doc "The `n` oldest live blocks: `{age_s, size, addr, ns, stack}`."
  def olds(n, demangle \\ false) do
    case :leakscope.olds(n, demangle) do
      list when is_list(list) ->
        for {age, size, addr, ns, stack} <- list,
            do: {age, size, addr, ns, Enum.map(stack, &frame/1)}

      error ->
        error
    end
  end

  @doc "Call counts, live and total figures, allocator figures."
  defdelegate stats(), to: :leakscope

  @doc "Forget every live block seen so far."
  defdelegate reset(), to: :leakscope

  @doc "The report as a binary; `opts` as a keyword list or a map."
  def report(opts \\ []), do: :leakscope.report(Map.new(opts))

  @doc "Sites growing linearly or exponentially, fastest first."
  def growing do
    case :leakscope.growing() do
      list when is_list(list) ->
        for site <- list, do: Map.update!(site, :stack, &Enum.map(&1, fn f -> frame(f) end))

      error ->
        error
    end
  end

  @doc "The report formats this build offers."
  defdelegate formats(), to: :leakscope

  defp frame(tuple), do: tuple |> Tuple.to_list() |> Enum.map(&nil_if_undefined/1) |> List.to_tuple()
  defp nil_if_undefined(:undefined), do: nil
  defp nil_if_undefined(x), do: x
end
