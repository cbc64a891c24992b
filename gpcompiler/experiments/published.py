"""The authors' published mean normalized L2 errors on their 50 synthetic curves (paper
Sec. 5.2, 5.3), for the side-by-side tables of the ``select`` and ``segments`` experiments.

Source: results/Synth.zip of the public repository Timothy-SHU/Function-Privatization-in-
the-Local-Model (files Synth/SynthAdapt_EPS_METHOD.txt, second number: PrivFuncSelect;
Synth/Synth_EPS_METHOD.txt, row per degree 1, 4, 8, 16, second and third numbers:
PrivFuncSeg and its continuous version), 30 runs per curve, at eps = 0.001, 0.002,
0.005, 0.01, 0.02, 0.05, 0.1 (GP, "Laplace") and rho = eps^2/10 (CGP, "Gaussian"),
transcribed to six significant digits. Each is the mean over curves of the mean over runs.
"""

PUBLISHED = {
    "GP": {
        "PrivFuncSelect": (5.23637, 2.67692, 1.25874, 0.854328, 0.623244, 0.415697, 0.284142),
        "PrivFuncSeg (degree 1)":
            (4.39137, 2.26647, 1.20369, 0.742217, 0.530868, 0.325228, 0.234558),
        "PrivFuncSeg (continuous, degree 1)":
            (3.82406, 1.98836, 1.07421, 0.702593, 0.534044, 0.372565, 0.286109),
        "PrivFuncSeg (degree 4)":
            (7.20821, 3.91318, 1.52956, 0.835936, 0.527494, 0.293588, 0.188757),
        "PrivFuncSeg (continuous, degree 4)":
            (7.05538, 3.82536, 1.48891, 0.819568, 0.517983, 0.28944, 0.187232),
        "PrivFuncSeg (degree 8)":
            (10.9529, 5.52403, 2.21464, 1.13404, 0.594348, 0.30512, 0.186343),
        "PrivFuncSeg (continuous, degree 8)":
            (10.8979, 5.50531, 2.20986, 1.1287, 0.592286, 0.303246, 0.185398),
        "PrivFuncSeg (degree 16)":
            (19.3732, 9.74785, 3.91631, 1.90698, 0.964888, 0.409685, 0.220573),
        "PrivFuncSeg (continuous, degree 16)":
            (19.3698, 9.74456, 3.91559, 1.90681, 0.964666, 0.409651, 0.220501),
    },
    "CGP": {
        "PrivFuncSelect": (4.20554, 2.13033, 1.11035, 0.73488, 0.534449, 0.341031, 0.214035),
        "PrivFuncSeg (degree 1)":
            (4.73433, 2.42326, 1.16519, 0.734839, 0.496562, 0.299521, 0.208848),
        "PrivFuncSeg (continuous, degree 1)":
            (4.01662, 2.09153, 1.02548, 0.681367, 0.498208, 0.343943, 0.261461),
        "PrivFuncSeg (degree 4)":
            (6.40481, 3.19388, 1.36757, 0.762949, 0.452365, 0.22215, 0.135969),
        "PrivFuncSeg (continuous, degree 4)":
            (6.18109, 3.07423, 1.30595, 0.734575, 0.438157, 0.218311, 0.134982),
        "PrivFuncSeg (degree 8)": (8.008, 4.03678, 1.65844, 0.829718, 0.447638, 0.21512, 0.129128),
        "PrivFuncSeg (continuous, degree 8)":
            (7.87749, 3.97686, 1.62715, 0.818034, 0.440262, 0.211788, 0.127054),
        "PrivFuncSeg (degree 16)":
            (10.1929, 5.15271, 2.05781, 1.05462, 0.546152, 0.22629, 0.126256),
        "PrivFuncSeg (continuous, degree 16)":
            (10.1307, 5.12899, 2.04837, 1.04826, 0.5421, 0.224788, 0.125325),
    },
}
