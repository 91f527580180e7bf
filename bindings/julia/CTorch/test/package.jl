# CTorch.load_package (AOTInductor .pt2). Included by runtests.jl. The Julia
# suite runs on the Debian 12 leg (LibTorch 1.13, no AOTInductor: every call
# reports not-supported with the version needed); where LibTorch >= 2.6 and
# CTORCH_TEST_PACKAGES (tests/models/make_packages.py) are present, the mlp
# package runs and its metadata is read.
@testset "AOTInductor packages" begin
    v = split(unsafe_string(CTorch.ct_torch_version()), '.')
    aoti = (parse(Int, v[1]), parse(Int, v[2])) >= (2, 6)
    if !aoti
        e = try
            CTorch.load_package("model.pt2"); nothing
        catch err
            err
        end
        @test e isa CTorchError
        @test e.code == 7                     # CT_ERR_NOT_SUPPORTED
        @test occursin("need LibTorch >= 2.6", e.message)
        @test occursin(unsafe_string(CTorch.ct_torch_version()), e.message)
        e2 = try
            CTorch.load_package(UInt8[0x50, 0x4b, 0x03, 0x04]); nothing
        catch err
            err
        end
        @test e2 isa CTorchError && e2.code == 7
    else
        dir = get(ENV, "CTORCH_TEST_PACKAGES", "")
        if isempty(dir) || !isfile(joinpath(dir, "mlp.pt2"))
            @skip_test "no packages in CTORCH_TEST_PACKAGES=$(repr(dir))"
        else
            p = CTorch.load_package(joinpath(dir, "mlp.pt2"))
            @test CTorch.metadata(p)["AOTI_DEVICE_KEY"] == "cpu"
            @test CTorch.device(p) == Device(:cpu)
            @test length(CTorch.call_spec(p)) == 2
            # Inductor may fold some of the state_dict away (fc2.bias), never the weights.
            names = Set(CTorch.constant_names(p))
            @test Set(["fc1.bias", "fc1.weight", "fc2.weight"]) ⊆ names ⊆
                  Set(["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"])
            x = CTorch.full((3, 8), 0.5; dtype = Float32)
            y = p(x)
            @test y isa Tensor
            # Runners: one package run from several Julia threads at once.
            p2 = try CTorch.load_package(joinpath(dir, "mlp.pt2"); num_runners = 2) catch err; err end
            if p2 isa CTorchError
                @test p2.code == 7 && occursin("one runner", p2.message)   # LibTorch 2.6's loader
            else
                @test CTorch.num_runners(p2) == 2
                want = Array(y)
                ok = fill(false, 8)
                Threads.@threads for i in 1:8
                    ok[i] = all(k -> Array(p2(x)) == want, 1:10)
                end
                @test all(ok)
                free!(p2)
            end
            e = try
                CTorch.load_package(joinpath(dir, "not_a_zip.pt2")); nothing
            catch err
                err
            end
            @test e isa CTorchError && e.code == 5 && occursin("not a zip archive", e.message)
            free!(p)
        end
    end
end
