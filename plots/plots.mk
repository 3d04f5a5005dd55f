# plots.mk — figure rules, included by the Makefile.
#   make figures RESULTS=file.h5 [BASELINE=algo] [FIGURE_FORMATS="png pdf svg"]
#       every figure kind the file's cells allow, peers beside the modules, into
#       plots/out/<stem>*.png and .pdf (and any other format listed)
BASELINE ?= naive_sort
FIGURE_FORMATS ?= png pdf
figures: $(BUILD)/topkp
	TOPKP=$(BUILD)/topkp BASELINE=$(BASELINE) FIGURE_FORMATS="$(FIGURE_FORMATS)" bash scripts/figures.sh $(RESULTS)
